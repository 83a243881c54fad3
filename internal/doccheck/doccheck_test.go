package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// api is what one package exports: top-level names, and the fields and
// methods of its types.
type api struct {
	names   map[string]bool
	fields  map[string]map[string]bool // type → field
	methods map[string]bool
}

func exported(t *testing.T, dir string) api {
	t.Helper()
	a := api{names: map[string]bool{}, fields: map[string]map[string]bool{}, methods: map[string]bool{}}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					a.methods[d.Name.Name] = true
				} else {
					a.names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						a.names[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							fs := map[string]bool{}
							for _, fl := range st.Fields.List {
								for _, nm := range fl.Names {
									fs[nm.Name] = true
								}
								if len(fl.Names) == 0 { // embedded
									if id, ok := fl.Type.(*ast.Ident); ok {
										fs[id.Name] = true
									}
								}
							}
							a.fields[s.Name.Name] = fs
						}
					case *ast.ValueSpec:
						for _, nm := range s.Names {
							a.names[nm.Name] = true
						}
					}
				}
			}
		}
	}
	return a
}

var (
	goBlock  = regexp.MustCompile("(?s)```go\n(.*?)```")
	selector = regexp.MustCompile(`\b(rebuild|syncfilter|snapshot|normalize|ops)\.([A-Z]\w*)`)
	literal  = regexp.MustCompile(`\b(rebuild|syncfilter|snapshot|ops)\.([A-Z]\w*)\{`)
	fieldKey = regexp.MustCompile(`(?m)(?:^\s*|[{,]\s*)([A-Z]\w*):\s`)
	call     = regexp.MustCompile(`\.([A-Z]\w*)\(`)
)

// TestDocumentsNameWhatExists: every package-qualified name in the Go
// blocks of README.md and docs/*.md exists, every field set in a
// composite literal of a library type is a field of that type, and every
// method called is a method of some library type (or of database/sql,
// which the examples use beside it).
func TestDocumentsNameWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	apis := map[string]api{}
	for _, p := range []string{"rebuild", "syncfilter", "snapshot", "normalize", "rebuild/ops"} {
		apis[filepath.Base(p)] = exported(t, filepath.Join(root, p))
	}
	stdlib := map[string]bool{"Exec": true, "ExecContext": true, "Query": true, "QueryContext": true, "QueryRow": true,
		"QueryRowContext": true, "Driver": true, "Close": true, "Error": true, "Println": true, "Printf": true,
		"Is": true, "As": true, "Open": true, "Scan": true, "Err": true, "Sleep": true, "Background": true, "WithTimeout": true}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllStringSubmatch(string(b), -1) {
			code := m[1]
			checked++
			for _, s := range selector.FindAllStringSubmatch(code, -1) {
				if !apis[s[1]].names[s[2]] {
					t.Errorf("%s: %s.%s is not exported by package %s", filepath.Base(doc), s[1], s[2], s[1])
				}
			}
			for _, idx := range literal.FindAllStringSubmatchIndex(code, -1) {
				pkg, typ := code[idx[2]:idx[3]], code[idx[4]:idx[5]]
				fields, ok := apis[pkg].fields[typ]
				if !ok {
					continue // not a struct literal of a known struct
				}
				body := literalBody(code[idx[1]:])
				for _, f := range fieldKey.FindAllStringSubmatch(body, -1) {
					if !fields[f[1]] {
						t.Errorf("%s: %s.%s has no field %s", filepath.Base(doc), pkg, typ, f[1])
					}
				}
			}
			for _, c := range call.FindAllStringSubmatch(code, -1) {
				name := c[1]
				known := stdlib[name]
				for _, a := range apis {
					known = known || a.methods[name] || a.names[name]
				}
				if !known {
					t.Errorf("%s: .%s( is no method of the library (nor one the examples use beside it)", filepath.Base(doc), name)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d Go blocks found: the documents moved?", checked)
	}
}

// literalBody returns the top level of a composite literal's body, up to
// the brace that closes it: nested literals are left out (their fields
// are theirs).
func literalBody(s string) string {
	var b strings.Builder
	depth := 1
	for _, r := range s {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return b.String()
			}
		}
		if depth == 1 && r != '}' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
