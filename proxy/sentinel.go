package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// resolveMaster asks the sentinels, in turn, for the master's address
// (SENTINEL GET-MASTER-ADDR-BY-NAME) and switches to it when it changed:
// the old master's idle connections are closed (it may be a replica now,
// answering writes with READONLY).
func (p *Proxy) resolveMaster() error {
	var last error
	for _, addr := range p.up.Addrs {
		master, err := p.askSentinel(addr)
		if err != nil {
			last = err
			continue
		}
		n := p.node(master)
		if old := p.master.Swap(n); old != n {
			p.log.Info("sentinel master", zap.String("master", master), zap.String("name", p.up.MasterName))
			if old != nil {
				old.closeIdle()
			}
		}
		return nil
	}
	return last
}

// askSentinel asks one sentinel for the master's address.
func (p *Proxy) askSentinel(addr string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", addr, err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(dialTimeout))
	var out []byte
	n := 1
	if p.up.SentinelPassword != "" {
		out = appendCommand(out, []byte("AUTH"), []byte(p.up.SentinelPassword))
		n++
	}
	out = appendCommand(out, []byte("SENTINEL"), []byte("GET-MASTER-ADDR-BY-NAME"), []byte(p.up.MasterName))
	if _, err := nc.Write(out); err != nil {
		return "", fmt.Errorf("sentinel %s: %w", addr, err)
	}
	br := bufio.NewReader(nc)
	var r []byte
	for i := 0; i < n; i++ {
		if r, err = readReply(br, r[:0]); err != nil {
			return "", fmt.Errorf("sentinel %s: %w", addr, err)
		}
		if t := errText(r); t != "" {
			return "", fmt.Errorf("%w: sentinel %s: %s", ErrTopology, addr, t)
		}
	}
	v, err := parseReply(r)
	if err != nil {
		return "", err
	}
	if v.null || len(v.elems) != 2 {
		return "", fmt.Errorf("%w: sentinel %s knows no master %q", ErrNoMaster, addr, p.up.MasterName)
	}
	port, err := strconv.Atoi(v.elems[1].text())
	if err != nil {
		return "", fmt.Errorf("%w: sentinel %s: port %q", ErrTopology, addr, v.elems[1].text())
	}
	return net.JoinHostPort(v.elems[0].text(), strconv.Itoa(port)), nil
}
