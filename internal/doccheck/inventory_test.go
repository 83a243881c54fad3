package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// inventory is what rebuild/ and its internal packages hold that runs
// concurrently: every mutex and atomic value by the name
// docs/ARCHITECTURE.md gives it (Type.field, or a package variable), and
// every go statement by its file.
type inventory struct {
	mutexes, atomics, goFiles []string
}

func readInventory(t *testing.T, root string) inventory {
	t.Helper()
	var inv inventory
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "ops" { // the operator's package is counted apart
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = strings.TrimPrefix(filepath.ToSlash(rel), "internal/")
		kind := func(e ast.Expr) string {
			if st, ok := e.(*ast.StarExpr); ok {
				e = st.X
			}
			if ix, ok := e.(*ast.IndexExpr); ok {
				e = ix.X
			}
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return ""
			}
			pkg, _ := sel.X.(*ast.Ident)
			switch {
			case pkg == nil:
			case pkg.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex"):
				return "mutex"
			case pkg.Name == "atomic":
				return "atomic"
			}
			return ""
		}
		note := func(k, name string) {
			switch k {
			case "mutex":
				inv.mutexes = append(inv.mutexes, name)
			case "atomic":
				inv.atomics = append(inv.atomics, name)
			}
		}
		fields := func(typ string, st *ast.StructType) {
			for _, fl := range st.Fields.List {
				if inner, ok := fl.Type.(*ast.StructType); ok { // db.mu struct { sync.Mutex; … }
					for _, n := range fl.Names {
						for _, in := range inner.Fields.List {
							if len(in.Names) == 0 && kind(in.Type) == "mutex" {
								note("mutex", typ+"."+n.Name)
							}
						}
					}
					continue
				}
				for _, n := range fl.Names {
					note(kind(fl.Type), typ+"."+n.Name)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					fields(n.Name.Name, st)
				}
			case *ast.ValueSpec:
				for _, nm := range n.Names {
					note(kind(n.Type), nm.Name)
				}
			case *ast.GoStmt:
				inv.goFiles = append(inv.goFiles, rel)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestInventoryNamesWhatExists: docs/ARCHITECTURE.md's inventory of
// locks, atomic values and goroutines names every one of them in rebuild/
// and its internal packages, and counts them as the code does. The
// counters Stats reports (gate.Counters) are atomics the inventory leaves
// out, by name.
func TestInventoryNamesWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	inv := readInventory(t, filepath.Join(root, "rebuild"))
	var atomics []string
	for _, a := range inv.atomics {
		if !strings.HasPrefix(a, "Counters.") {
			atomics = append(atomics, a)
		}
	}
	for _, c := range []struct {
		what, heading string
		names         []string
		quote         func(string) string
	}{
		{"mutex", `### Mutexes \((\d+)\)`, inv.mutexes, func(s string) string { return s + "`" }},
		{"atomic value", `### Atomic values \((\d+)`, atomics, func(s string) string { return "`" + s + "`" }},
		{"goroutine launch site", `### Goroutines \((\d+) launch sites\)`, inv.goFiles, func(s string) string { return "(" + s + ")" }},
	} {
		m := regexp.MustCompile(c.heading).FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("ARCHITECTURE.md has no heading %q", c.heading)
			continue
		}
		if m[1] != fmt.Sprint(len(c.names)) {
			t.Errorf("ARCHITECTURE.md counts %s of kind %q, the code has %d: %v", m[1], c.what, len(c.names), c.names)
		}
		for _, n := range c.names {
			if !strings.Contains(doc, c.quote(n)) {
				t.Errorf("ARCHITECTURE.md does not name the %s %s (as %s)", c.what, n, c.quote(n))
			}
		}
	}
	if len(inv.mutexes) == 0 || len(atomics) == 0 || len(inv.goFiles) == 0 {
		t.Fatalf("found nothing to check: %+v", inv)
	}
}
