package resp

import (
	"bufio"
	"io"
	"testing"
	"time"

	"go.uber.org/zap"
)

// handOverHandler's "handover" command blocks until its client has left
// (left) or for 50 ms (stays), then answers +handed, registering with
// OnUnsent what takes the thing handed over back; unsent reports it.
func handOverHandler(unsent chan<- string) handlerFunc {
	return func(c *Conn, args [][]byte) {
		if string(args[0]) != "handover" {
			c.W.Simple(string(args[0]))
			return
		}
		how := string(args[1])
		c.Block(func(gone <-chan struct{}) {
			switch how {
			case "left":
				select {
				case <-gone:
				case <-time.After(5 * time.Second):
				}
			default:
				time.Sleep(50 * time.Millisecond)
			}
			c.W.Simple("handed")
			c.OnUnsent(func() { unsent <- how })
		})
	}
}

// A blocked command's reply that hands the client something (a ONCE
// claim given over at a lapse) and that cannot be sent, because the
// client left as the command's wait ended (the server saw its connection
// end), is dropped, and the command's OnUnsent functions run: what it
// handed over is taken back at once, not held by no one (KV-13). A reply
// that is sent runs none.
func TestBlockedReplyNotSentRunsOnUnsent(t *testing.T) {
	cases := []struct {
		name    string
		how     string
		leave   bool
		wantRan bool
	}{
		{"the client left as the wait ended", "left", true, true},
		{"the client stays and reads the reply", "stays", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unsent := make(chan string, 1)
			addr := startTest(t, Config{Logger: zap.NewNop()}, handOverHandler(unsent))
			nc, r := dialTest(t, addr)
			// A ping first: the handover is not the connection's first
			// command, and the server reads on while it blocks.
			expectLines(t, nc, r, "ping\r\n", "+ping\r\n")
			if _, err := io.WriteString(nc, "handover "+tc.how+"\r\n"); err != nil {
				t.Fatal(err)
			}
			if tc.leave {
				time.Sleep(50 * time.Millisecond) // the command blocks
				nc.Close()
			} else if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "+handed\r\n" {
				t.Fatalf("reply: %q %v, want +handed", line, err)
			}
			select {
			case how := <-unsent:
				if !tc.wantRan {
					t.Fatalf("OnUnsent ran (%s) for a reply that was sent", how)
				}
			case <-time.After(2 * time.Second):
				if tc.wantRan {
					t.Fatal("the reply to a client that left was not sent, and OnUnsent never ran: what it handed over stays with no one")
				}
			}
		})
	}
}
