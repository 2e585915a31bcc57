package image

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DefaultPath is the PATH Docker gives a container whose image sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ImageEnv is the environment a process of the image gets, as Docker
// builds it: the config's Env, PATH defaulted when the image sets none,
// and HOME (home, or /root) when the image sets none. Nothing else is
// added: the smoke runs the image as it ships.
func ImageEnv(cf *v1.ConfigFile, home string) []string {
	env := append([]string{}, cf.Config.Env...)
	has := func(k string) bool {
		for _, e := range env {
			if strings.HasPrefix(e, k+"=") {
				return true
			}
		}
		return false
	}
	if !has("PATH") {
		env = append(env, "PATH="+DefaultPath)
	}
	if !has("HOME") {
		if home == "" {
			home = "/root"
		}
		env = append(env, "HOME="+home)
	}
	return env
}

// envValue is the value of k in env ("" when unset).
func envValue(env []string, k string) string {
	v := ""
	for _, e := range env {
		if kk, vv, ok := strings.Cut(e, "="); ok && kk == k {
			v = vv
		}
	}
	return v
}

// lookupUser resolves a config User ("", "name", "uid", "name:group",
// "uid:gid") against the image's /etc/passwd and /etc/group.
func lookupUser(read func(string) ([]byte, error), user string) (uid, gid uint32, err error) {
	if user == "" || user == "root" {
		return 0, 0, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, gid, err = lookupID(read, "/etc/passwd", u, true)
	if err != nil {
		return 0, 0, err
	}
	if hasGroup {
		gid, _, err = lookupID(read, "/etc/group", g, false)
		if err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

// lookupID finds name (or a number) in a passwd- or group-format file. For
// passwd it returns uid and primary gid; for group the gid.
func lookupID(read func(string) ([]byte, error), file, name string, passwd bool) (uint32, uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		if !passwd {
			return uint32(n), 0, nil
		}
		// A numeric user: its primary group from passwd if listed, else the same number.
		if b, err := read(file); err == nil {
			for _, f := range passwdEntries(b) {
				if f[2] == name {
					g, _ := strconv.ParseUint(f[3], 10, 32)
					return uint32(n), uint32(g), nil
				}
			}
		}
		return uint32(n), uint32(n), nil
	}
	b, err := read(file)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: reading %s: %w", name, file, err)
	}
	for _, f := range passwdEntries(b) {
		if f[0] != name {
			continue
		}
		a, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: bad id for %s: %q", file, name, f[2])
		}
		if !passwd {
			return uint32(a), 0, nil
		}
		g, err := strconv.ParseUint(f[3], 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: bad group id for %s: %q", file, name, f[3])
		}
		return uint32(a), uint32(g), nil
	}
	return 0, 0, fmt.Errorf("user %q is not in the image's %s", name, file)
}

// passwdEntries splits colon-separated lines with at least 4 fields.
func passwdEntries(b []byte) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) >= 4 {
			out = append(out, f)
		} else if len(f) == 3 { // group: name:x:gid
			out = append(out, append(f, ""))
		}
	}
	return out
}

// homeOf is the home directory of uid in the image's /etc/passwd.
func homeOf(passwd []byte, uid uint32) string {
	sc := bufio.NewScanner(bytes.NewReader(passwd))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) >= 6 && f[2] == strconv.FormatUint(uint64(uid), 10) {
			return f[5]
		}
	}
	return ""
}
