package syncbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Machine describes where a run was measured.
type Machine struct {
	CPU, Kernel, Go, SQLite, Driver string
	Load                            string // /proc/loadavg's 1, 5 and 15 minutes when described
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
	m.Load = "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], ", ")
		}
	}
	return m
}

// cpuModel returns the first CPU of /proc/cpuinfo: its model name, family,
// model, stepping and clock, and whether it runs under a hypervisor
// ("unknown" without /proc/cpuinfo).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	info := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if len(info) > 0 {
				break // the first CPU's block ended
			}
			continue
		}
		if k = strings.TrimSpace(k); info[k] == "" {
			info[k] = strings.TrimSpace(v)
		}
	}
	name := info["model name"]
	if name == "" {
		return "unknown"
	}
	if info["cpu family"] != "" {
		name += fmt.Sprintf(" (family %s, model %s, stepping %s, %s MHz)", info["cpu family"], info["model"], info["stepping"], strings.Split(info["cpu MHz"], ".")[0])
	}
	if slices.Contains(strings.Fields(info["flags"]), "hypervisor") {
		name += ", under a hypervisor"
	}
	return name
}

// Write writes the machine as a Markdown table, with the command run.
func (m Machine) Write(w io.Writer, command string) error {
	_, err := fmt.Fprintf(w, "| | |\n|---|---|\n| CPU | %s, %d cores (GOMAXPROCS %d) |\n| load average at the end (1, 5, 15 min) | %s |\n| OS | %s |\n| Go | %s |\n| SQLite | %s through %s |\n| date | %s |\n| command | `%s` |\n",
		m.CPU, m.Cores, m.Procs, m.Load, m.Kernel, m.Go, m.SQLite, m.Driver, m.Date.Format("2006-01-02"), command)
	return err
}
