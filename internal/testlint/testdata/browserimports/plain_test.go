package browserimports

import (
	"net/http"
	"testing"
)

func TestPlain(t *testing.T) { _ = http.StatusOK }
