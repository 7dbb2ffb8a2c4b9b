package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/rlstore/rlstore/gateway/rlsconfig"
)

// reloadSettle is how long a reload waits after a change for the writes
// that follow it (an editor's save, a ConfigMap's symlink swap) to end.
const reloadSettle = 100 * time.Millisecond

// Load reads dir and puts its configuration in force. A configuration that
// cannot be loaded leaves the one in force as it is; the error says which
// file and line, and is counted (config_load_error).
func (s *Service) Load(dir string) error {
	c, err := rlsconfig.LoadDir(dir)
	if err != nil {
		s.Stats.ConfigFailures.Add(1)
		return err
	}
	s.SetConfig(c)
	s.Stats.ConfigLoads.Add(1)
	return nil
}

// Watch reloads dir when a file in it changes and whenever hup receives,
// until ctx ends, logging each reload and each failure.
func (s *Service) Watch(ctx context.Context, dir string, hup <-chan struct{}, log *slog.Logger) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return err
	}
	go s.watch(ctx, w, dir, hup, log)
	return nil
}

func (s *Service) watch(ctx context.Context, w *fsnotify.Watcher, dir string, hup <-chan struct{}, log *slog.Logger) {
	defer w.Close()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			s.reload(dir, "SIGHUP", log)
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			log.Debug("rate limit configuration folder changed", "event", ev.String())
			settle.Reset(reloadSettle)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			log.Warn("watching the rate limit configuration folder", "dir", dir, "err", err)
		case <-settle.C:
			s.reload(dir, "files changed", log)
		}
	}
}

func (s *Service) reload(dir, why string, log *slog.Logger) {
	if err := s.Load(dir); err != nil {
		log.Error("rate limit configuration not reloaded; keeping the one in force", "reason", why, "err", err)
		return
	}
	log.Info("rate limit configuration reloaded", "reason", why, "domains", s.Config().Domains())
}
