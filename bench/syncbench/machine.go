package syncbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a run was measured.
type Machine struct {
	CPU, Kernel, Go, SQLite, Driver string
	Cores, Procs                    int
	Date                            time.Time
}

// ThisMachine describes this machine; sqlite is the version the app's
// pool reported.
func ThisMachine(d Driver, sqlite string) Machine {
	m := Machine{CPU: cpuModel(), Go: runtime.Version(), SQLite: sqlite, Cores: runtime.NumCPU(),
		Procs: runtime.GOMAXPROCS(0), Date: time.Now()}
	m.Driver = d.Module + " " + d.Version()
	if d.Name == Mattn.Name {
		m.Driver += " (cgo)"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = runtime.GOOS + " " + strings.TrimSpace(string(b))
	} else {
		m.Kernel = runtime.GOOS
	}
	m.Kernel += ", " + runtime.GOARCH
	return m
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Write writes the machine as a Markdown table, with the command run.
func (m Machine) Write(w io.Writer, command string) error {
	_, err := fmt.Fprintf(w, "| | |\n|---|---|\n| CPU | %s, %d cores (GOMAXPROCS %d) |\n| OS | %s |\n| Go | %s |\n| SQLite | %s through %s |\n| date | %s |\n| command | `%s` |\n",
		m.CPU, m.Cores, m.Procs, m.Kernel, m.Go, m.SQLite, m.Driver, m.Date.Format("2006-01-02"), command)
	return err
}
