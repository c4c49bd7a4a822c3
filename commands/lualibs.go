package commands

import (
	"encoding/json"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The bit and cjson libraries that Redis loads for scripts, in the part
// scripts use: bit is LuaBitOp's (32-bit operations), cjson encodes and
// decodes JSON (cjson.null is the JSON null).

func openBit(L *lua.LState) *lua.LTable {
	arg := func(L *lua.LState, i int) int32 {
		f := float64(L.CheckNumber(i))
		// LuaBitOp normalizes through a double's low 32 bits.
		return int32(uint32(int64(math.Mod(f, 4294967296))))
	}
	ret := func(L *lua.LState, v int32) int {
		L.Push(lua.LNumber(v))
		return 1
	}
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))<<(uint32(arg(L, 2))&31)))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))>>(uint32(arg(L, 2))&31)))
		},
		"arshift": func(L *lua.LState) int { return ret(L, arg(L, 1)>>(uint32(arg(L, 2))&31)) },
		"rol": func(L *lua.LState) int {
			return ret(L, int32(bits.RotateLeft32(uint32(arg(L, 1)), int(uint32(arg(L, 2))&31))))
		},
		"ror": func(L *lua.LState) int {
			return ret(L, int32(bits.RotateLeft32(uint32(arg(L, 1)), -int(uint32(arg(L, 2))&31))))
		},
		"bswap": func(L *lua.LState) int { return ret(L, int32(bits.ReverseBytes32(uint32(arg(L, 1))))) },
		"tohex": func(L *lua.LState) int {
			v := uint32(arg(L, 1))
			n := int32(8)
			if L.GetTop() >= 2 {
				n = arg(L, 2)
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	t := L.NewTable()
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

func openCJSON(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to '?' (expected 1 argument)")
		}
		var b strings.Builder
		if err := encodeJSON(&b, L.Get(1), null, 0); err != "" {
			L.RaiseError("Cannot serialise %s", err)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		var v any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if err := d.Decode(&v); err != nil || d.More() {
			L.RaiseError("Expected value but found invalid token")
		}
		L.Push(decodeJSON(L, v, null))
		return 1
	}))
	return t
}

// cjsonNumber writes a number as cjson does (%.14g).
func cjsonNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// encodeJSON writes v; a non-empty result names what cannot be encoded.
func encodeJSON(b *strings.Builder, v lua.LValue, null *lua.LUserData, depth int) string {
	if depth > 1000 {
		return "table: excessive nesting"
	}
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "number: must not be NaN or Inf"
		}
		b.WriteString(cjsonNumber(f))
	case lua.LString:
		q, _ := json.Marshal(string(v))
		b.Write(q)
	case *lua.LUserData:
		if v != null {
			return "userdata: type not supported"
		}
		b.WriteString("null")
	case *lua.LTable:
		// An array when every key is a positive integer, as cjson.
		n, maxKey, isArray := 0, 0, true
		var keys []string
		vals := map[string]lua.LValue{}
		v.ForEach(func(k, val lua.LValue) {
			n++
			if num, ok := k.(lua.LNumber); ok && float64(num) == math.Trunc(float64(num)) && num >= 1 {
				maxKey = max(maxKey, int(num))
			} else {
				isArray = false
			}
			ks := lua.LVAsString(k)
			keys = append(keys, ks)
			vals[ks] = val
		})
		if isArray && maxKey <= 2*n+10 {
			if n == 0 {
				b.WriteString("{}")
				return ""
			}
			b.WriteByte('[')
			for i := 1; i <= maxKey; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if e := encodeJSON(b, v.RawGetInt(i), null, depth+1); e != "" {
					return e
				}
			}
			b.WriteByte(']')
			return ""
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(k)
			b.Write(q)
			b.WriteByte(':')
			if e := encodeJSON(b, vals[k], null, depth+1); e != "" {
				return e
			}
		}
		b.WriteByte('}')
	default:
		return v.Type().String() + ": type not supported"
	}
	return ""
}

func decodeJSON(L *lua.LState, v any, null *lua.LUserData) lua.LValue {
	switch v := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return lua.LNumber(f)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, e := range v {
			t.RawSetInt(i+1, decodeJSON(L, e, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetString(k, decodeJSON(L, e, null))
		}
		return t
	}
	return lua.LNil
}
