// Command tcpsink is the app behind part T's TCP route: it reads every byte a
// connection sends until the client closes its half, then answers with how many
// it read (8 bytes, big-endian) and closes. A connection that sends nothing stays
// open: the idle connections of part T.
package main

import (
	"encoding/binary"
	"flag"
	"io"
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
			// io.Copy into io.Discard reads with a 32 KiB buffer of its own.
			n, _ := io.Copy(io.Discard, c)
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(n))
			_, _ = c.Write(b[:])
		}()
	}
}
