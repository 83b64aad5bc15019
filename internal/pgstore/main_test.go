package pgstore_test

import (
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
