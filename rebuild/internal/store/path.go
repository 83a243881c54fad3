package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Path is a database path resolved once, at open, so that a later chdir
// or a new symbolic link changes nothing the library opens.
type Path struct {
	Given string // as the app spelled it
	Abs   string // absolute, symbolic links kept: the name the app uses, checked at every call
	Real  string // absolute, symbolic links resolved: the file SQLite opens
}

// ResolvePath resolves p. A file that does not exist yet (a database the
// library will create) resolves through its directory.
func ResolvePath(p string) (Path, error) {
	if p == "" {
		return Path{}, fmt.Errorf("resolve database path: empty")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return Path{}, fmt.Errorf("resolve database path %s: %w", p, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if !os.IsNotExist(err) {
			return Path{}, fmt.Errorf("resolve database path %s: %w", p, err)
		}
		dir, base := filepath.Split(abs)
		d, derr := filepath.EvalSymlinks(dir)
		if derr != nil {
			d = filepath.Clean(dir)
		}
		real = filepath.Join(d, base)
	}
	return Path{Given: p, Abs: abs, Real: real}, nil
}

// URI returns the SQLite URI of path with opts: every byte outside the
// unreserved set percent-encoded, so that no path is read as URI syntax.
func URI(path, opts string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	var b strings.Builder
	b.WriteString("file://")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/', c == ':':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if opts != "" {
		b.WriteByte('?')
		b.WriteString(opts)
	}
	return b.String()
}
