package main

import "github.com/oncekv/oncekv/bench/internal/benchkit"

// The raw RESP client of benchkit, under short names.
type (
	conn  = benchkit.Conn
	reply = benchkit.Reply
)

var (
	dial     = benchkit.Dial
	dialN    = benchkit.DialN
	closeAll = benchkit.CloseAll
)
