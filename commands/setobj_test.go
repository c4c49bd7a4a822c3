package commands

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// sscanAll runs SSCAN key to the end with count, calling between each
// call (after the call number) and returning every member seen.
func sscanAll(t *testing.T, srv *Server, c *resp.Conn, key string, count int, between func(call int)) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for call := 0; ; call++ {
		if call > 10000 {
			t.Fatal("the scan does not end")
		}
		r := send(srv, c, "SSCAN", key, cursor, "COUNT", strconv.Itoa(count))
		lines := strings.Split(r, "\r\n")
		if len(lines) < 4 || lines[0] != "*2" {
			t.Fatalf("SSCAN reply %q", r)
		}
		cursor = lines[2]
		for _, m := range bulks(t, strings.Join(lines[3:], "\r\n")) {
			seen[m] = true
		}
		if cursor == "0" {
			return seen
		}
		if between != nil {
			between(call)
		}
	}
}

// SSCAN of an object set never misses a member present from the first
// call to the last, whatever is added and removed between calls, and
// ends.
func TestSScanObjectNeverMisses(t *testing.T) {
	for _, count := range []int{1, 7, 100} {
		t.Run(strconv.Itoa(count), func(t *testing.T) {
			srv := onceServer(t)
			c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			stays := map[string]bool{}
			for i := range 300 {
				send(srv, c, "SADD", "s", fmt.Sprint("m", i))
				if i%3 != 0 {
					stays[fmt.Sprint("m", i)] = true
				}
			}
			if r := send(srv, c, "OBJECT", "ENCODING", "s"); r != "$9\r\nhashtable\r\n" {
				t.Fatalf("OBJECT ENCODING = %q", r)
			}
			seen := sscanAll(t, srv, c, "s", count, func(call int) {
				send(srv, c, "SREM", "s", fmt.Sprint("m", 3*call))
				send(srv, c, "SADD", "s", fmt.Sprint("new", call), fmt.Sprint("new2-", call))
			})
			for m := range stays {
				if !seen[m] {
					t.Errorf("member %s, present throughout, was not returned", m)
				}
			}
		})
	}
}

// SPOP and SRANDMEMBER of an object set, by their properties: what they
// answer is in the set, SPOP's distinct and gone afterwards, SCARD
// follows.
func TestSPopObjectProperties(t *testing.T) {
	srv := onceServer(t)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	in := map[string]bool{}
	args := []string{"SADD", "s"}
	for i := range 600 {
		in[fmt.Sprint("m", i)] = true
		args = append(args, fmt.Sprint("m", i))
	}
	send(srv, c, args...)
	check := func(what string, got []string, n int, distinct bool) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s: %d members, want %d", what, len(got), n)
		}
		d := map[string]bool{}
		for _, m := range got {
			if !in[m] {
				t.Fatalf("%s: %q is not in the set", what, m)
			}
			d[m] = true
		}
		if distinct && len(d) != n {
			t.Fatalf("%s: repeated members %q", what, got)
		}
	}
	check("SRANDMEMBER s -50", bulks(t, send(srv, c, "SRANDMEMBER", "s", "-50")), 50, false)
	check("SRANDMEMBER s 50", bulks(t, send(srv, c, "SRANDMEMBER", "s", "50")), 50, true)
	check("SRANDMEMBER s 300", bulks(t, send(srv, c, "SRANDMEMBER", "s", "300")), 300, true)
	check("SRANDMEMBER s 700", bulks(t, send(srv, c, "SRANDMEMBER", "s", "700")), 600, true)
	check("SRANDMEMBER s -1000", bulks(t, send(srv, c, "SRANDMEMBER", "s", "-1000")), 1000, false)
	size := 600
	for _, n := range []int{1, 10, 200, 300} {
		got := bulks(t, send(srv, c, "SPOP", "s", strconv.Itoa(n)))
		check("SPOP s "+strconv.Itoa(n), got, n, true)
		for _, m := range got {
			delete(in, m)
		}
		size -= n
		if r := send(srv, c, "SCARD", "s"); r != fmt.Sprintf(":%d\r\n", size) {
			t.Fatalf("after SPOP s %d, SCARD = %q, want %d", n, r, size)
		}
	}
	r := strings.Split(send(srv, c, "SPOP", "s"), "\r\n")
	if len(r) != 3 || !in[r[1]] {
		t.Fatalf("SPOP s = %q", r)
	}
	delete(in, r[1])
	rest := bulks(t, send(srv, c, "SMEMBERS", "s"))
	check("SMEMBERS s", rest, len(in), true)
}

// A hashtable-encoded set an older build stored inline is read as it is
// (SSCAN pages it in the slot order an object has) and becomes an object
// at its next write, with the same members.
func TestSetInlineHashtableBecomesObject(t *testing.T) {
	st := openTestStore(t)
	srv := onceServerOver(t, st)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	old := setVal{}
	var want []string
	for i := range 50 {
		old.m = append(old.m, []byte(fmt.Sprint("w", i)))
		want = append(want, fmt.Sprint("w", i))
	}
	old.sortUnique()
	if _, err := st.Update(func(tx store.Tx) error {
		return tx.Set(0, []byte("s"), store.Value{Kind: store.KindSet, Data: old.encode(nil)})
	}); err != nil {
		t.Fatal(err)
	}
	members := func() []string {
		got := bulks(t, send(srv, c, "SMEMBERS", "s"))
		slices.Sort(got)
		return got
	}
	slices.Sort(want)
	if got := members(); !slices.Equal(got, want) {
		t.Fatalf("SMEMBERS of the inline set = %q", got)
	}
	if r := send(srv, c, "OBJECT", "ENCODING", "s"); r != "$9\r\nhashtable\r\n" {
		t.Fatalf("OBJECT ENCODING = %q", r)
	}
	if seen := sscanAll(t, srv, c, "s", 7, nil); len(seen) != 50 {
		t.Fatalf("SSCAN of the inline set saw %d members", len(seen))
	}
	// A scan begun inline goes on over the object the write makes.
	seen := sscanAll(t, srv, c, "s", 5, func(call int) {
		if call == 1 {
			send(srv, c, "SADD", "s", "new")
		}
	})
	for _, m := range want {
		if !seen[m] {
			t.Errorf("SSCAN across the conversion missed %s", m)
		}
	}
	var obj uint64
	if _, err := st.View(func(tx store.Tx) error {
		v, _, err := tx.Get(0, []byte("s"))
		obj = v.Obj
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if obj == 0 {
		t.Fatal("the set is not an object after a write")
	}
	w := append(slices.Clone(want), "new")
	slices.Sort(w)
	if got := members(); !slices.Equal(got, w) {
		t.Fatalf("SMEMBERS after the write = %q", got)
	}
	if r := send(srv, c, "SCARD", "s"); r != ":51\r\n" {
		t.Fatalf("SCARD = %q", r)
	}
}
