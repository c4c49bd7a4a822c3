package kv

import "encoding/json"

// Codec turns answers into the bytes the server keeps, and back.
//
// Every caller that shares an answer decodes its own copy from these
// bytes (also callers in the same process as the runner), so values
// never alias between goroutines.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSONCodec is the default codec: encoding/json.
type JSONCodec struct{}

// Marshal is json.Marshal.
func (JSONCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal is json.Unmarshal.
func (JSONCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
