//go:build !unix

package main

import "strconv"

// owner: files have no numeric owner here; the snapshot stays the
// writer's.
type owner struct{ notes []string }

func resolveOwner(db, ownerFlag, groupFlag string) (owner, error) {
	if ownerFlag != "" || groupFlag != "" {
		return owner{}, usagef("--owner and --group need a system with numeric file owners")
	}
	return owner{}, nil
}

func (owner) apply(string) error { return nil }

func ownerString(string) string { return "" }

// userName: no user database to ask here.
func userName(uid int) string { return strconv.Itoa(uid) }
