package conf

import (
	"errors"
	"io/fs"
	"strconv"
)

// Unreadable says that a file a configuration names cannot be read, and why, in
// the words every such problem uses: "/etc/x.pem" cannot be read: no such file or
// directory. The reason is err without its path, which the message quotes once.
func Unreadable(file string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return strconv.Quote(file) + " cannot be read: " + err.Error()
}
