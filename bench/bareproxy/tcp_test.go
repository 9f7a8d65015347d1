package main

import (
	"context"
	"io"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
)

// A tcp:// target: bytes pass both ways, and each side's half-close reaches
// the other (the client reads the app's answer to what it sent before closing
// its half).
func TestRun_ForwardsTCPBothWaysWithHalfClose(t *testing.T) {
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	go func() {
		c, err := app.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got, _ := io.ReadAll(c) // until the client's half-close
		_, _ = c.Write(append([]byte("echo:"), got...))
	}()

	ctx, cancel := context.WithCancel(context.Background())
	var log logtest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--target", "tcp://" + app.Addr().String()}, &log)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run = %v", err)
		}
	}()
	re := regexp.MustCompile(`bareproxy listening on (\S+)\n`)
	var addr string
	if !testwait.Until(5*time.Second, func() bool {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		t.Fatalf("no listening line: %q", log.String())
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "echo:hello" {
		t.Errorf("read %q, %v; want echo:hello", got, err)
	}
}
