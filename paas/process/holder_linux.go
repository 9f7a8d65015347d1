package process

import (
	"bufio"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// holder is what /proc says of the program listening on an app's port.
type holder struct {
	port int
	pid  int    // 0 when no process of reaper's user has the socket open
	uid  int    // owner of the listening socket, -1 when unknown
	comm string // the program's name (/proc/<pid>/comm), which holds no argument
}

// describe says who holds the port, for an error message.
func (h holder) describe() string {
	switch {
	case h.pid > 0 && h.comm != "":
		return "pid " + strconv.Itoa(h.pid) + ", " + h.comm
	case h.pid > 0:
		return "pid " + strconv.Itoa(h.pid)
	case h.uid >= 0:
		return "a process of uid " + strconv.Itoa(h.uid) + " whose pid reaper cannot see"
	}
	return "a program reaper cannot identify"
}

// readyPort returns the TCP port the app's readiness probe reaches.
func (s *spec) readyPort() (int, bool) {
	hostport := s.ready.Addr()
	if s.ready.HTTP != "" {
		u, err := url.Parse(s.ready.HTTP)
		if err != nil {
			return 0, false
		}
		hostport = u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			hostport = net.JoinHostPort(u.Hostname(), port)
		}
	}
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, false
	}
	port, err := strconv.Atoi(p)
	return port, err == nil && port > 0 && port < 65536
}

// findHolder finds the process that listens on port, from /proc/net/tcp and tcp6
// (the socket's inode and owner) and the descriptors under /proc/<pid>/fd (which
// process has it open: only reaper's user's processes can be read).
func findHolder(port int) holder {
	h := holder{port: port, uid: -1}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningOn(f, port, inodes, &h.uid)
	}
	if len(inodes) == 0 {
		return h
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return h
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := "/proc/" + e.Name() + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(dir + "/" + fd.Name())
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				h.pid, _ = strconv.Atoi(e.Name())
				if b, err := readBounded("/proc/"+e.Name()+"/comm", 64); err == nil {
					h.comm = strings.TrimSpace(string(b))
				}
				return h
			}
		}
	}
	return h
}

// listeningOn adds to inodes the sockets of table file (/proc/net/tcp format) that
// listen on port, on any address, and sets uid to the owner of one.
func listeningOn(file string, port int, inodes map[string]bool, uid *int) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	want := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
			continue
		}
		_, p, ok := strings.Cut(fs[1], ":")
		if !ok || strings.TrimLeft(p, "0") != want {
			continue
		}
		inodes[fs[9]] = true
		if u, err := strconv.Atoi(fs[7]); err == nil {
			*uid = u
		}
	}
}

// adoptable is a process proven to be an app of this driver, not adopted yet.
type adoptable struct {
	pidf *os.File
	rec  pidRecord
}

// close releases the pidfd of an adoptable that is not adopted; nil is a no-op.
func (e *adoptable) close() {
	if e != nil {
		_ = e.pidf.Close()
	}
}

// proveHolder finds who holds a's port and, when it is the app started earlier by a
// driver on this data directory (its process group's leader passes proveMarked),
// returns it. Otherwise it returns, for the error message, who holds the port and,
// when reaper could look, why that is not the app: " (port 3001: pid 4242, python3;
// not the app reaper started: …)".
func (d *Driver) proveHolder(a *app) (*adoptable, string) {
	port, ok := a.spec.readyPort()
	if !ok {
		return nil, ""
	}
	h := findHolder(port)
	who := " (port " + strconv.Itoa(port) + ": " + h.describe()
	if h.pid == 0 {
		return nil, who + ")"
	}
	leader := h.pid
	if st, err := readStat(h.pid); err == nil {
		leader = st.pgrp // the app may have left the port to a child of its group
	}
	pidf, rec, why := proveMarked(leader, d.key, a.spec.id, a.spec.command)
	if pidf == nil {
		return nil, who + "; not the app reaper started: " + why + ")"
	}
	return &adoptable{pidf: pidf, rec: rec}, ""
}

// adoptHolder adopts e, which holds a's port, as a's process: it is ready, since its
// port answers. a.mu must be held.
func (d *Driver) adoptHolder(a *app, e *adoptable) error {
	a.proc = newAdopted(e.rec, e.pidf, a.spec.logFile)
	if !d.watchAdopted(a, true) {
		return ErrClosed
	}
	d.writePid(a.spec.id, e.rec)
	d.log.Info("the app's port was held by the app itself, started earlier by reaper without a pid file now, proven by its "+MarkerEnv+" marker: adopted",
		"app", a.spec.id, "pid", e.rec.PID)
	return nil
}
