package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/reapergw/reaper/internal/conf"
)

// What `reaper check` finds beyond the configuration's own rules: what serve
// would meet on this machine.

// dataDirProblem says why serve could not use dir as node.data_dir ("" when it
// can): a directory that exists must be writable; one that does not must be
// creatable, its nearest existing parent a writable directory (serve creates
// it with its parents). It leaves nothing behind.
func dataDirProblem(dir string) string {
	dir = filepath.Clean(dir)
	at := dir
	for {
		info, err := os.Stat(at)
		switch {
		case err == nil && !info.IsDir():
			if at == dir {
				return strconv.Quote(dir) + " is a file, not a directory"
			}
			return strconv.Quote(dir) + " cannot be created: " + strconv.Quote(at) + " is a file"
		case err == nil:
			return writable(dir, at)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // under a file: its parent says
			return strconv.Quote(dir) + " cannot be used: " + err.Error()
		}
		parent := filepath.Dir(at)
		if parent == at {
			return strconv.Quote(dir) + " cannot be created: no part of it exists"
		}
		at = parent
	}
}

// writable checks that the directory at, dir or its nearest existing parent,
// takes a new entry, by making one and removing it.
func writable(dir, at string) string {
	probe, err := os.MkdirTemp(at, ".reaper-check-")
	if err != nil {
		if at == dir {
			return strconv.Quote(dir) + " is not writable: " + unwrapPathErr(err).Error()
		}
		return strconv.Quote(dir) + " cannot be created in " + strconv.Quote(at) + ": " + unwrapPathErr(err).Error()
	}
	os.Remove(probe)
	return ""
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// emptyFile reports whether the configuration file at path says nothing: no
// content, or only comments and blank lines. Such a file is valid, every
// setting its default, which is rarely what its author meant.
func emptyFile(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	n, err := conf.Parse(data)
	if err != nil {
		return false, err
	}
	return n == nil || len(n.Content) == 0, nil
}
