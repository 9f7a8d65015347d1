package clusterenv

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
)

// BurnEnv, set to a number in a program's environment, makes BurnIfAsked turn
// that program into a CPU burner of that many busy goroutines: the bench and the
// fault harness load the machine with their own binary, started again.
const BurnEnv = "REAPER_CPU_BURN"

// BurnIfAsked spins forever (until the process is killed) when BurnEnv asks it
// to, and returns at once otherwise. Call it first in main.
func BurnIfAsked() {
	n, err := strconv.Atoi(os.Getenv(BurnEnv))
	if err != nil || n <= 0 {
		return
	}
	runtime.GOMAXPROCS(n) // one thread each: every one competes for a core
	var sink atomic.Uint64
	for range n {
		go func() {
			for i := uint64(0); ; i++ {
				if i%(1<<20) == 0 {
					sink.Add(1)
				}
			}
		}()
	}
	select {}
}

// BurnerArgs is the command line and environment of a burner of n goroutines
// made of the running program. At a higher priority than its caller's (nice
// -10) when the caller may raise one (root), so that it takes the cores from
// the processes the caller started; else at the same.
func BurnerArgs(n int) (argv, env []string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	argv = []string{self}
	if os.Geteuid() == 0 {
		argv = []string{"nice", "-n", "-10", self}
	}
	return argv, append(os.Environ(), BurnEnv+"="+strconv.Itoa(n)), nil
}
