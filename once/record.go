package once

import (
	"encoding/binary"
	"errors"

	"github.com/oncekv/oncekv/store"
)

// State is a record's state; a free key has no record.
type State byte

// The stored states.
const (
	Running State = 'r'
	Done    State = 'd'
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Done:
		return "done"
	}
	return "free"
}

// Record is a ONCE key's value. Its deadline is the store value's
// ExpireAt: the lease deadline of a running record, the keep deadline of a
// done one (0: kept until deleted), so TTL shows it and the sweeper frees
// the key when it passes.
type Record struct {
	State       State
	Token       uint64
	Fingerprint []byte
	HasFP       bool
	Answer      []byte
	Deadline    int64
}

var errCorrupt = errors.New("corrupt once record")

// encode lays a record out as: state(1) token(8) hasFP(1) fpLen(uvarint)
// fp answer.
func (r Record) encode() store.Value {
	return r.appendTo(make([]byte, 0, 11+len(r.Fingerprint)+len(r.Answer)))
}

// appendTo is encode, appending the record's bytes to b. r's fingerprint
// and answer must not share memory with b's spare room: they never do
// with the engine's buffer, as a loaded record points into the store's
// own copy of what was saved (store.Tx.Set copies).
func (r Record) appendTo(b []byte) store.Value {
	b = append(b, byte(r.State))
	b = binary.BigEndian.AppendUint64(b, r.Token)
	if r.HasFP {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Fingerprint)))
	b = append(b, r.Fingerprint...)
	b = append(b, r.Answer...)
	return store.Value{Kind: store.KindOnce, Data: b, ExpireAt: r.Deadline}
}

func decode(v store.Value) (Record, error) {
	b := v.Data
	if len(b) < 10 {
		return Record{}, errCorrupt
	}
	r := Record{State: State(b[0]), Token: binary.BigEndian.Uint64(b[1:9]), HasFP: b[9] == 1, Deadline: v.ExpireAt}
	n, w := binary.Uvarint(b[10:])
	if w <= 0 || uint64(len(b)-10-w) < n {
		return Record{}, errCorrupt
	}
	off := 10 + w
	r.Fingerprint = b[off : off+int(n)]
	r.Answer = b[off+int(n):]
	if r.State != Running && r.State != Done {
		return Record{}, errCorrupt
	}
	return r, nil
}

// IsRunning reports whether v is a running ONCE record: its deadline is a
// lease, which EXPIRE and PERSIST must not change.
func IsRunning(v store.Value) bool {
	return v.Kind == store.KindOnce && len(v.Data) > 0 && State(v.Data[0]) == Running
}
