package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (my (weird) app) S 1 4200 4200 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.state != 'S' || st.pgrp != 4200 || st.startTicks != 987654 || !st.alive() {
		t.Errorf("parseStat = %+v", st)
	}
	zombie, _ := parseStat([]byte("1 (z) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n"))
	if zombie.alive() {
		t.Error("a zombie is alive")
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 x 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestReadStat_Self(t *testing.T) {
	st, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.pgrp != syscall.Getpgrp() || st.startTicks == 0 || !st.alive() {
		t.Errorf("readStat(self) = %+v", st)
	}
}

func TestPidFile_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	rec := pidRecord{PID: 1234, PGID: 1234, StartTicks: 99, Command: []string{"app", "--x"}, StartedAt: time.Unix(1700000000, 0).UTC()}
	if err := writePidFile(dir, "hello", rec); err != nil {
		t.Fatal(err)
	}
	got, err := readPidFile(pidPath(dir, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got.PID != rec.PID || got.PGID != rec.PGID || got.StartTicks != rec.StartTicks ||
		!slices.Equal(got.Command, rec.Command) || !got.StartedAt.Equal(rec.StartedAt) {
		t.Errorf("read back %+v, want %+v", got, rec)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files after an atomic write: %d, want 1 (no temp file left)", len(entries))
	}
	for name, content := range map[string]string{
		"a.pid": `{"pid": 0, "pgid": 1, "start_ticks": 1, "command": ["x"]}`,
		"b.pid": `{"pid": 5, "pgid": 5, "start_ticks": 0, "command": ["x"]}`,
		"c.pid": `{"pid": 5, "pgid": 5, "start_ticks": 1, "command": []}`,
		"d.pid": `[1]`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readPidFile(path); err == nil {
			t.Errorf("%s accepted: %s", name, content)
		}
	}
}

func TestGroupAlive(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL); _ = cmd.Wait() }()
	if !groupAlive(pgid) {
		t.Fatal("a group with a sleeping member is not alive")
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Dead but not collected: a zombie does not count.
	fd := mustPidfd(t, pgid)
	waitReadable(t, fd)
	if groupAlive(pgid) {
		t.Error("a group of one zombie is alive")
	}
	_ = cmd.Wait()
	if groupAlive(pgid) {
		t.Error("an empty group is alive")
	}
}
