//go:build !linux

package plugin

import "syscall"

// hangups watches nothing off Linux: parked connections get a reading goroutine,
// and requests waiting with their body unread are not watched.
var hangups noEpoll

type noEpoll struct{}

func (noEpoll) add(*watch, syscall.RawConn) bool { return false }
func (noEpoll) remove(*watch, syscall.RawConn)   {}
