package admission

import (
	"syscall"
	"time"
)

// processCPU is the CPU time admit's process has used so far, user and
// system; 0 where the system will not say, which reads as an idle CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
