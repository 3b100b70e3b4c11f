package dynamotest

import (
	"net"
	"os"
	"testing"
)

func TestListenerOwnedBy(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if owned, known := listenerOwnedBy(os.Getpid(), port); !known || !owned {
		t.Errorf("own listener: owned=%v known=%v, want true true", owned, known)
	}
	if owned, known := listenerOwnedBy(1, port); !known || owned {
		t.Errorf("pid 1: owned=%v known=%v, want false true", owned, known)
	}
}
