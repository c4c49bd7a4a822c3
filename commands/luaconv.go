package commands

import (
	"bytes"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// replyToLua converts one reply, as a command wrote it in RESP (proto 2
// or 3, redis.setresp's), into the Lua value redis.call returns, as Redis
// 7.0's redisProtocolToLuaType does; isErr reports an error reply, whose
// value is the table {err=…}. A malformed reply (a bug of a command)
// becomes an error too.
func replyToLua(L *lua.LState, b []byte) (v lua.LValue, isErr bool) {
	p := replyParser{L: L, b: b}
	v, isErr, ok := p.value()
	if !ok {
		return errTable(L, "-ERR internal error: a command wrote a malformed reply"), true
	}
	return v, isErr
}

type replyParser struct {
	L   *lua.LState
	b   []byte
	pos int
}

// line returns the rest of the current line, after its type byte.
func (p *replyParser) line() ([]byte, bool) {
	i := bytes.Index(p.b[p.pos:], []byte("\r\n"))
	if i < 0 {
		return nil, false
	}
	l := p.b[p.pos+1 : p.pos+i]
	p.pos += i + 2
	return l, true
}

func (p *replyParser) value() (lua.LValue, bool, bool) {
	if p.pos >= len(p.b) {
		return nil, false, false
	}
	L := p.L
	typ := p.b[p.pos]
	l, ok := p.line()
	if !ok {
		return nil, false, false
	}
	switch typ {
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(l))
		return t, false, true
	case '-':
		return errTable(L, "-"+string(l)), true, true
	case ':':
		n, err := strconv.ParseInt(string(l), 10, 64)
		return lua.LNumber(n), false, err == nil
	case '$', '=':
		n, err := strconv.Atoi(string(l))
		if err != nil {
			return nil, false, false
		}
		if n < 0 {
			return lua.LFalse, false, true
		}
		if p.pos+n+2 > len(p.b) {
			return nil, false, false
		}
		s := p.b[p.pos : p.pos+n]
		p.pos += n + 2
		if typ == '=' {
			// A verbatim string: {verbatim_string={format=, string=}}.
			t, inner := L.NewTable(), L.NewTable()
			if len(s) >= 4 {
				inner.RawSetString("format", lua.LString(s[:3]))
				inner.RawSetString("string", lua.LString(s[4:]))
			}
			t.RawSetString("verbatim_string", inner)
			return t, false, true
		}
		return lua.LString(s), false, true
	case '*', '~', '%', '>':
		n, err := strconv.Atoi(string(l))
		if err != nil {
			return nil, false, false
		}
		if n < 0 {
			return lua.LFalse, false, true
		}
		t := L.CreateTable(n, 0)
		switch typ {
		case '%':
			m := L.NewTable()
			for i := 0; i < n; i++ {
				k, _, ok1 := p.value()
				v, _, ok2 := p.value()
				if !ok1 || !ok2 {
					return nil, false, false
				}
				m.RawSet(k, v)
			}
			t.RawSetString("map", m)
			return t, false, true
		case '~':
			set := L.NewTable()
			for i := 0; i < n; i++ {
				k, _, ok := p.value()
				if !ok {
					return nil, false, false
				}
				set.RawSet(k, lua.LTrue)
			}
			t.RawSetString("set", set)
			return t, false, true
		}
		for i := 0; i < n; i++ {
			v, _, ok := p.value()
			if !ok {
				return nil, false, false
			}
			t.RawSetInt(i+1, v)
		}
		return t, false, true
	case '_':
		return lua.LNil, false, true
	case '#':
		return lua.LBool(len(l) == 1 && l[0] == 't'), false, true
	case ',':
		f, err := strconv.ParseFloat(string(l), 64)
		if err != nil {
			switch string(l) {
			case "inf":
				f, err = math.Inf(1), nil
			case "-inf":
				f, err = math.Inf(-1), nil
			}
		}
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(f))
		return t, false, err == nil || string(l) == "nan"
	case '(':
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(l))
		return t, false, true
	}
	return nil, false, false
}
