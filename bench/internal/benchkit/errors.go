package benchkit

import "errors"

// ErrProtocol is wrapped by errors about a reply that is not valid RESP.
var ErrProtocol = errors.New("resp: protocol error")

// ErrNotReady is wrapped by errors about a server that did not answer
// PING before the timeout.
var ErrNotReady = errors.New("server not ready")

// ErrNoRepo is returned by FindRepo outside the oncekv module.
var ErrNoRepo = errors.New("not inside the github.com/oncekv/oncekv module")
