package commands

import (
	"bytes"
	"encoding/binary"

	"github.com/oncekv/oncekv/store"
)

// Hashes and sets that are objects name each element by its slot
// (fieldSlot, 8 bytes big-endian) and then the field or member (or its
// SHA-256 when long), so the elements lie in SCAN's order: a cursor is a
// slot to seek, and a random slot picks a random element. slotPage and
// slotPick read them so, item turning an element into what the caller
// keeps (copies: the element's bytes are valid only during the call).

// slotPage is one page of a SCAN of obj: at least count items (fewer at
// the end) whose slots are cursor or more, in slot order, and the cursor
// of the next page (0 when this is the last). A slot is never split
// between two pages.
func slotPage[T any](tx store.Tx, obj uint64, prefix []byte, cursor uint64, count int64, item func(sub, val []byte) (T, error)) ([]T, uint64, error) {
	var page []T
	var next, last uint64
	err := tx.ScanElems(obj, binary.BigEndian.AppendUint64(bytes.Clone(prefix), cursor), func(sub, val []byte) (bool, error) {
		if !bytes.HasPrefix(sub, prefix) {
			return false, nil
		}
		if len(sub) < len(prefix)+8 {
			return false, ErrBadObject
		}
		slot := binary.BigEndian.Uint64(sub[len(prefix):])
		if int64(len(page)) >= count && slot != last {
			next = slot
			return false, nil
		}
		it, err := item(sub, val)
		if err != nil {
			return false, err
		}
		last = slot
		page = append(page, it)
		return true, nil
	})
	return page, next, err
}

// slotPick is the item of obj's first element at or after slot, or of
// its first element of all when none is; an object with no element is
// ErrBadObject (an object is never left empty).
func slotPick[T any](tx store.Tx, obj uint64, prefix []byte, slot uint64, item func(sub, val []byte) (T, error)) (T, error) {
	var out T
	found := false
	first := func(sub, val []byte) (bool, error) {
		if !bytes.HasPrefix(sub, prefix) {
			return false, nil
		}
		var err error
		out, err = item(sub, val)
		found = true
		return false, err
	}
	if err := tx.ScanElems(obj, binary.BigEndian.AppendUint64(bytes.Clone(prefix), slot), first); err != nil || found {
		return out, err
	}
	if err := tx.ScanElems(obj, prefix, first); err != nil || found {
		return out, err
	}
	return out, ErrBadObject
}
