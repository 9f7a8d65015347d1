package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPick(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr := Addr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port < low || port >= ephemeralLow() {
			t.Errorf("%s is outside [%d, %d)", addr, low, ephemeralLow())
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		ln.Close()
	}
}
