//go:build unix

package main

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"

	"github.com/syncfilter/syncfilter/internal/fsafe"
)

// owner is who the snapshot is given to after a rebuild: by default the
// owner and group of the database file (the app's user reads what it
// owns), overridden by --owner and --group. -1 leaves an id as the file
// has it.
type owner struct {
	uid, gid int
	// notes say why a default could not be applied (printed before the
	// summary): only root gives a file to another user, and a user gives
	// it only to its own groups.
	notes []string
}

// resolveOwner decides the snapshot's owner before anything is scanned.
// An explicit --owner or --group this process may not apply is a usage
// error; a default it may not apply is left, with a note.
func resolveOwner(db, ownerFlag, groupFlag string) (owner, error) {
	o := owner{uid: -1, gid: -1}
	if info, err := os.Stat(db); err == nil {
		o.uid, o.gid, _ = fsafe.Owner(info)
	}
	if ownerFlag != "" {
		u, err := lookupUser(ownerFlag)
		if err != nil {
			return o, usagef("invalid value %q for flag --owner: %v", ownerFlag, err)
		}
		o.uid, _ = strconv.Atoi(u.Uid) // the group stays the database's unless --group
	}
	if groupFlag != "" {
		g, err := lookupGroup(groupFlag)
		if err != nil {
			return o, usagef("invalid value %q for flag --group: %v", groupFlag, err)
		}
		o.gid, _ = strconv.Atoi(g.Gid)
	}
	if os.Geteuid() == 0 {
		return o, nil
	}
	if o.uid >= 0 && o.uid != os.Geteuid() {
		if ownerFlag != "" {
			return o, usagef("invalid value %q for flag --owner: only root may give a file to another user", ownerFlag)
		}
		o.notes = append(o.notes, fmt.Sprintf("the database is owned by %s; the snapshot stays owned by %s (only root may give a file to another user): make sure the app's user can read it (--group and --mode 0640)",
			userName(o.uid), userName(os.Geteuid())))
		o.uid = -1
	}
	if o.gid >= 0 && o.gid != os.Getegid() {
		groups, _ := os.Getgroups()
		if !slices.Contains(groups, o.gid) {
			if groupFlag != "" {
				return o, usagef("invalid value %q for flag --group: this user is not a member of it", groupFlag)
			}
			o.notes = append(o.notes, fmt.Sprintf("the database's group is %s, which this user is not a member of; the snapshot keeps group %s",
				groupName(o.gid), groupName(os.Getegid())))
			o.gid = -1
		}
	}
	return o, nil
}

// apply gives file (the snapshot written, links resolved) to the owner,
// if it is not already theirs.
func (o owner) apply(file string) error {
	if o.uid < 0 && o.gid < 0 {
		return nil
	}
	info, err := os.Lstat(file)
	if err != nil {
		return err
	}
	uid, gid, ok := fsafe.Owner(info)
	if !ok || (o.uid < 0 || o.uid == uid) && (o.gid < 0 || o.gid == gid) {
		return nil
	}
	return os.Lchown(file, o.uid, o.gid)
}

func lookupUser(s string) (*user.User, error) {
	if _, err := strconv.Atoi(s); err == nil {
		if u, err := user.LookupId(s); err == nil {
			return u, nil
		}
	}
	return user.Lookup(s)
}

func lookupGroup(s string) (*user.Group, error) {
	if _, err := strconv.Atoi(s); err == nil {
		if g, err := user.LookupGroupId(s); err == nil {
			return g, nil
		}
	}
	return user.LookupGroup(s)
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}

// ownerString names a file's owner and group, for the summary.
func ownerString(file string) string {
	info, err := os.Lstat(file)
	if err != nil {
		return ""
	}
	uid, gid, ok := fsafe.Owner(info)
	if !ok {
		return ""
	}
	return userName(uid) + ":" + groupName(gid)
}
