// Command tcpsink is the app behind part T's TCP route: it reads every byte a
// connection sends until the client closes its half, then answers with how many
// it read (8 bytes, big-endian) and closes. A connection that sends nothing stays
// open: the idle connections of part T.
package main

import (
	"encoding/binary"
	"flag"
	"log"
	"net"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "host:port")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			// Read in large pieces: io.Discard would read 8 KiB at a time, and the
			// sink's syscalls would take the CPU the route is measured with.
			var n int64
			buf := make([]byte, 1<<20)
			for {
				k, err := c.Read(buf)
				n += int64(k)
				if err != nil {
					break
				}
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(n))
			_, _ = c.Write(b[:])
		}()
	}
}
