//go:build !linux

package plugin

import "syscall"

// hangups watches nothing off Linux: parked connections get a reading goroutine.
var hangups noEpoll

type noEpoll struct{}

func (noEpoll) add(*Parked, syscall.RawConn) bool { return false }
func (noEpoll) remove(*Parked, syscall.RawConn)   {}
