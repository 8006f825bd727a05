package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's profiles (net/http/pprof under /debug/pprof/) on
// their own listener, off unless --debug-addr is set: profiles show
// internals (stacks, command line) and cost CPU while they run, so they
// never share the API's address, keys or browser rules. A non-loopback
// address is allowed (a profiler may run on another host) but logged.
func serveDebug(addr string, errc chan<- error) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr %s: %w", addr, err)
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		slog.Warn("profiles are served on a non-loopback address: anyone who can reach it can read them", "debug_addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	slog.Info("profiles", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	go func() { errc <- srv.Serve(ln) }()
	return ln.Addr(), nil
}
