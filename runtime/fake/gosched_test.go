package fake_test

import goruntime "runtime"

func runtimeGosched() { goruntime.Gosched() }
