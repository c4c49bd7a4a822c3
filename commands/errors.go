package commands

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/oncekv/oncekv/store"
)

// Sentinel errors of command handling. Their text is the RESP error reply,
// code first, exactly as Redis 7 words it.
var (
	ErrSyntax        = errors.New("ERR syntax error")
	ErrNotInteger    = errors.New("ERR value is not an integer or out of range")
	ErrNotFloat      = errors.New("ERR value is not a valid float")
	ErrOverflow      = errors.New("ERR increment or decrement would overflow")
	ErrIncrNaN       = errors.New("ERR increment would produce NaN or Infinity")
	ErrWrongType     = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	ErrNoSuchKey     = errors.New("ERR no such key")
	ErrDBIndex       = errors.New("ERR DB index is out of range")
	ErrNoAuth        = errors.New("NOAUTH Authentication required.")
	ErrNoPassSet     = errors.New("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	ErrWrongPass     = errors.New("WRONGPASS invalid username-password pair or user is disabled.")
	ErrStringTooBig  = errors.New("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	ErrOffsetRange   = errors.New("ERR offset is out of range")
	ErrNoProto       = errors.New("NOPROTO unsupported protocol version")
	ErrExecNoMulti   = errors.New("ERR EXEC without MULTI")
	ErrDiscardNoMult = errors.New("ERR DISCARD without MULTI")
	ErrNestedMulti   = errors.New("ERR MULTI calls can not be nested")
	ErrWatchInMulti  = errors.New("ERR WATCH inside MULTI is not allowed")
	ErrNotInMulti    = errors.New("ERR Command not allowed inside a transaction")
	ErrExecAbort     = errors.New("EXECABORT Transaction discarded because of previous errors.")
	ErrClientName    = errors.New("ERR Client names cannot contain spaces, newlines or special characters.")
	ErrMisconf       = errors.New("MISCONF Errors writing to the data directory: writes are refused until the disk accepts them again; reads keep working. Check the server log for the cause.")
	ErrShutdown      = errors.New("ERR Errors trying to SHUTDOWN. Check logs.")
	ErrNoConfigFile  = errors.New("ERR The server is running without a config file")
	ErrCursor        = errors.New("ERR invalid cursor")
	ErrTimeout       = errors.New("ERR timeout is not an integer or out of range")
	ErrBusyKey       = errors.New("BUSYKEY Target key name already exists.")
	ErrDumpPayload   = errors.New("ERR DUMP payload version or checksum are wrong")
	ErrBadData       = errors.New("ERR Bad data format")
	// ErrDumpOnce has no Redis counterpart: a ONCE record has no RDB
	// encoding that a Redis server could restore.
	ErrDumpOnce = errors.New("ERR DUMP of a ONCE record (TYPE once) is not supported: no Redis server could restore it")
	// ErrKeyTooLong has no Redis counterpart: Redis takes keys of up to
	// proto-max-bulk-len, the storage engine here store.MaxKeyLen.
	ErrKeyTooLong = errors.New("ERR key is too long (at most " + strconv.Itoa(store.MaxKeyLen) + " bytes)")
	// ErrFieldValueTooLong has no Redis counterpart either: a field of a
	// hashtable-encoded hash and its value are one store value.
	ErrFieldValueTooLong = errorf("ERR field and value are too long (at most %d bytes together)", maxFieldValue)
	// ErrBadObject is the error of a collection whose elements in the
	// store do not read as its commands wrote them (slotobj.go).
	ErrBadObject = errors.New("ERR stored collection is damaged")
	// ErrElemTooLong is the store's refusal of an element name, which no
	// command builds longer than store.MaxElemLen (long fields and
	// members are named by their SHA-256).
	ErrElemTooLong = errorf("ERR %s", store.ErrElemTooLong)
	// ErrValueTooLong has no Redis counterpart either: Redis takes values
	// of up to proto-max-bulk-len, the storage engine here
	// store.MaxValueLen.
	ErrValueTooLong = errors.New("ERR value is too long (at most " + strconv.Itoa(store.MaxValueLen) + " bytes)")
)

// Errors of the keyspace commands COPY, MOVE, SWAPDB and OBJECT.
var (
	// ErrIntRange answers an integer argument outside the int range
	// (Redis's getIntFromObjectOrReply).
	ErrIntRange   = errors.New("ERR value is out of range, value must between -2147483648 and 2147483647")
	ErrSameObject = errors.New("ERR source and destination objects are the same")
	ErrFirstDB    = errors.New("ERR invalid first DB index")
	ErrSecondDB   = errors.New("ERR invalid second DB index")
	// ErrNoLFU answers OBJECT FREQ: maxmemory-policy is noeviction.
	ErrNoLFU = errors.New("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	// ErrCopyRunning answers COPY of a running ONCE record: a copy would
	// be a second claim held by the same token (KV-9, KV-13).
	ErrCopyRunning = errors.New("ERR COPY of a running ONCE record is not supported: its claim belongs to one key")
	// ErrNoSwap answers SWAPDB on a store that cannot swap databases.
	ErrNoSwap = errors.New("ERR SWAPDB is not supported by this store")
)

// Errors of MONITOR, WAIT and the other server commands.
var (
	// ErrMonitorInMulti answers MONITOR queued in MULTI.
	ErrMonitorInMulti = errors.New("ERR MONITOR isn't allowed for DENY BLOCKING client")
	// ErrMonitorKeyspace answers a monitor's command on keys: Redis
	// 7.0's monitor is a replica to its processCommand.
	ErrMonitorKeyspace = errors.New("ERR Replica can't interact with the keyspace")
	// ErrTimeoutNegative answers a negative timeout (WAIT).
	ErrTimeoutNegative = errors.New("ERR timeout is negative")
	// ErrLCSNotString answers LCS of a key that holds no string.
	ErrLCSNotString = errors.New("ERR The specified keys must contain string values")
	// ErrLCSLenAndIdx answers LCS … LEN IDX.
	ErrLCSLenAndIdx = errors.New("ERR If you want both the length and indexes, please just use IDX.")
	// ErrLCSTooBig answers LCS whose table would exceed
	// proto-max-bulk-len.
	ErrLCSTooBig = errors.New("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
)

// Errors of the sorted set commands, in Redis 7.0's words.
var (
	ErrZaddXXNX     = errors.New("ERR XX and NX options at the same time are not compatible")
	ErrZaddGTLTNX   = errors.New("ERR GT, LT, and/or NX options at the same time are not compatible")
	ErrZaddIncr     = errors.New("ERR INCR option supports a single increment-element pair")
	ErrZsetNaN      = errors.New("ERR resulting score is not a number (NaN)")
	ErrMinMaxFloat  = errors.New("ERR min or max is not a float")
	ErrMinMaxLex    = errors.New("ERR min or max not valid string range item")
	ErrZLimitRank   = errors.New("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	ErrZScoresLex   = errors.New("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	ErrWeightFloat  = errors.New("ERR weight value is not a float")
	ErrNumkeys      = errors.New("ERR numkeys should be greater than 0")
	ErrCountPos     = errors.New("ERR count should be greater than 0")
	ErrLimitNeg     = errors.New("ERR LIMIT can't be negative")
	ErrRangePos     = errors.New("ERR value is out of range, must be positive")
	ErrRange        = errors.New("ERR value is out of range")
	ErrRandCount    = errors.New("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	ErrTimeoutFloat = errors.New("ERR timeout is not a float or out of range")
	// ErrRandTooMany has no Redis counterpart: Redis 7.0 answers a
	// negative count of any size, building the reply until it runs out
	// of memory.
	ErrRandTooMany = errors.New("ERR ZRANDMEMBER count is out of range (at most 1048576 members with repeats)")
	errZsetCorrupt = errors.New("ERR sorted set value is corrupt")
)

// Errors of the list commands, as Redis 7.0 words them.
var (
	ErrIndexRange = errors.New("ERR index out of range")
	ErrRankZero   = errors.New("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
	ErrCountNeg   = errors.New("ERR COUNT can't be negative")
	ErrMaxlenNeg  = errors.New("ERR MAXLEN can't be negative")
)

// Errors of scripting (EVAL, SCRIPT), in Redis 7.0's words.
var (
	ErrNoScript       = errors.New("NOSCRIPT No matching script. Please use EVAL.")
	ErrNumKeysNeg     = errors.New("ERR Number of keys can't be negative")
	ErrNumKeysBig     = errors.New("ERR Number of keys can't be greater than number of args")
	ErrBusy           = errors.New("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	ErrNotBusy        = errors.New("NOTBUSY No scripts in execution right now.")
	ErrUnkillable     = errors.New("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	ErrFlushMode      = errors.New("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
	ErrDebugMode      = errors.New("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	ErrDebugNotHere   = errors.New("ERR SCRIPT DEBUG YES|SYNC (the Lua debugger) is not supported by this server")
	ErrWriteFromRO    = errors.New("ERR Write commands are not allowed from read-only scripts.")
	ErrWriteFlagRO    = errors.New("ERR Can not execute a script with write flag using *_ro command.")
	ErrScriptKilled   = errors.New("ERR Script killed by user with SCRIPT KILL...")
	ErrScriptShutdown = errors.New("ERR Script killed by SHUTDOWN")
	ErrShebang        = errors.New("ERR Invalid script shebang")
	ErrShebangEngine  = errors.New("ERR Invalid engine in script shebang")
)

// errorText maps any error to the text of its RESP error reply. It is the
// one place where store and engine errors become RESP.
func errorText(err error) string {
	var re replyError
	switch {
	case errors.As(err, &re):
		return string(re)
	case errors.Is(err, store.ErrWrite):
		return misconf(err)
	case errors.Is(err, store.ErrBadDB):
		return ErrDBIndex.Error()
	case errors.Is(err, store.ErrKeyTooLong):
		return ErrKeyTooLong.Error()
	case errors.Is(err, store.ErrElemTooLong):
		return ErrElemTooLong.Error()
	case errors.Is(err, store.ErrValueTooLong):
		return ErrValueTooLong.Error()
	case errors.Is(err, store.ErrClosed):
		return "ERR server is shutting down"
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "ERR " + err.Error()
}

var sentinels = []error{
	ErrSyntax, ErrNotInteger, ErrNotFloat, ErrOverflow, ErrIncrNaN, ErrWrongType,
	ErrNoSuchKey, ErrDBIndex, ErrNoAuth, ErrNoPassSet, ErrWrongPass, ErrStringTooBig,
	ErrOffsetRange, ErrNoProto, ErrExecNoMulti, ErrDiscardNoMult, ErrNestedMulti,
	ErrWatchInMulti, ErrNotInMulti, ErrExecAbort, ErrClientName, ErrMisconf, ErrShutdown, ErrNoConfigFile, ErrCursor,
	ErrTimeout, ErrBusyKey, ErrDumpPayload, ErrBadData, ErrDumpOnce, ErrKeyTooLong, ErrValueTooLong,
	ErrIntRange, ErrSameObject, ErrFirstDB, ErrSecondDB, ErrNoLFU, ErrCopyRunning, ErrNoSwap,
	ErrMonitorInMulti, ErrMonitorKeyspace, ErrTimeoutNegative, ErrLCSNotString, ErrLCSLenAndIdx, ErrLCSTooBig,
	ErrZaddXXNX, ErrZaddGTLTNX, ErrZaddIncr, ErrZsetNaN, ErrMinMaxFloat, ErrMinMaxLex, ErrZLimitRank,
	ErrZScoresLex, ErrWeightFloat, ErrNumkeys, ErrCountPos, ErrLimitNeg, ErrRangePos, ErrRange,
	ErrRandCount, errZsetCorrupt, ErrRandTooMany, ErrTimeoutFloat,
	ErrIndexRange, ErrRankZero, ErrCountNeg, ErrMaxlenNeg,
	ErrNoScript, ErrNumKeysNeg, ErrNumKeysBig, ErrBusy, ErrNotBusy, ErrUnkillable, ErrFlushMode,
	ErrDebugMode, ErrDebugNotHere, ErrWriteFromRO, ErrWriteFlagRO, ErrScriptKilled, ErrScriptShutdown,
	ErrShebang, ErrShebangEngine,
}

// misconf words a refused write as Redis's MISCONF, naming the cause.
func misconf(err error) string {
	cause := strings.TrimPrefix(err.Error(), store.ErrWrite.Error()+": ")
	if len(cause) > maxCause {
		// A storage engine's error may quote what it refused (kilobytes
		// of a value, in hex): the server's log has it whole.
		cause = strings.ToValidUTF8(cause[:maxCause], "") + "…"
	}
	return "MISCONF Errors writing to the data directory (" + cause +
		"): writes are refused until it can be written again; reads keep working."
}

// maxCause is the most of a storage error's text that a reply quotes.
const maxCause = 200

// replyError is an error whose text is already a complete RESP error
// (used for messages with parameters, such as the command name).
type replyError string

func (e replyError) Error() string { return string(e) }

// errorf builds a replyError; the format must start with the error code.
func errorf(format string, a ...any) error { return replyError(fmt.Sprintf(format, a...)) }
