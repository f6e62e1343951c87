package podsync

// SetMountPoints replaces the mount table a Syncer reads before removing a
// pod directory.
func SetMountPoints(s *Syncer, f func() ([]string, error)) { s.o.mountPoints = f }
