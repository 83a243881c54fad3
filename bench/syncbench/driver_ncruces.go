//go:build (!cgo || syncfilter_nomattn) && !syncfilter_sqlcipher && !syncfilter_adiantum

package syncbench

// From v0.37 the driver carries SQLite itself (no embed package).
import _ "github.com/ncruces/go-sqlite3/driver" // registers the "sqlite3" driver

func init() { drivers = append(drivers, Ncruces) }
