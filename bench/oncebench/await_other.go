//go:build !linux

package main

import (
	"errors"
	"time"
)

func startEpollAwait([]*conn, []byte, time.Time) (await, error) {
	return await{}, errors.New("-wake-reader epoll needs Linux; use -wake-reader goroutines")
}
