package commands

import "fmt"

// configSet is CONFIG SET directive value [directive value …] (Redis 7):
// all the pairs are applied, or none. Config.SetConfig knows the
// directives and words the refusals as Redis does.
func configSet(x *Ctx) {
	if len(x.Args)%2 != 0 {
		x.Fail(ErrSyntax)
		return
	}
	pairs := make([][2]string, 0, (len(x.Args)-2)/2)
	for i := 2; i+1 < len(x.Args); i += 2 {
		pairs = append(pairs, [2]string{string(x.Args[i]), string(x.Args[i+1])})
	}
	if x.S.cfg.SetConfig == nil {
		x.W.Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", cString(x.Args[2])))
		return
	}
	if err := x.S.cfg.SetConfig(pairs); err != nil {
		x.W.Error("ERR " + err.Error())
		return
	}
	x.W.OK()
}

// requirePass is the default user's password in force ("": none).
func (s *Server) requirePass() string { return *s.pass.Load() }

// SetRequirePass changes the default user's password, as CONFIG SET
// requirepass does in Redis: clients that authenticated stay so; the
// others, and new clients, must AUTH with the new one. An empty password
// lets every client in.
func (s *Server) SetRequirePass(p string) { s.pass.Store(&p) }

// protoMaxBulkLen is the longest string a command may build.
func (s *Server) protoMaxBulkLen() int64 { return s.maxBulkLen.Load() }

// SetProtoMaxBulkLen changes the longest string a command may build
// (proto-max-bulk-len); n <= 0 is Redis's default.
func (s *Server) SetProtoMaxBulkLen(n int64) {
	if n <= 0 {
		n = maxBulk
	}
	s.maxBulkLen.Store(n)
}
