package main

import "net"

// sdNotify tells the service manager about this process's state, as
// sd_notify(3) does: one datagram of "KEY=value" lines to the unix socket
// named by $NOTIFY_SOCKET (a name starting with @ is in the abstract
// namespace, which package net takes as it is). Without NOTIFY_SOCKET, as
// outside a Type=notify systemd unit, it does nothing. deploy/systemd/rlstore.service waits for READY=1.
func sdNotify(lookupEnv func(string) (string, bool), state string) error {
	path, ok := lookupEnv("NOTIFY_SOCKET")
	if !ok || path == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}
