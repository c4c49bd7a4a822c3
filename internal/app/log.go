package app

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger is the server's logger at Redis's loglevel name; its level can
// change later (App.UseLogLevel, CONFIG SET loglevel).
func NewLogger(level string) (*zap.Logger, zap.AtomicLevel, error) {
	lvl := zap.NewAtomicLevelAt(zapLevel(level))
	zc := zap.NewProductionConfig()
	zc.Level = lvl
	zc.Sampling = nil
	zc.Encoding = "console"
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	log, err := zc.Build()
	if err != nil {
		return nil, lvl, fmt.Errorf("logger: %w", err)
	}
	return log, lvl, nil
}

// zapLevel maps Redis's loglevel names onto zap's levels.
func zapLevel(level string) zapcore.Level {
	return map[string]zapcore.Level{
		"debug": zap.DebugLevel, "verbose": zap.DebugLevel, "notice": zap.InfoLevel,
		"warning": zap.WarnLevel, "nothing": zap.FatalLevel,
	}[level]
}
