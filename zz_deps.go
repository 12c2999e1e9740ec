package eddy
import (
_ "github.com/jackc/pgx/v5"
_ "github.com/jackc/pgx/v5/pgxpool"
_ "modernc.org/sqlite"
_ "github.com/spf13/cobra"
_ "go.uber.org/goleak"
_ "sigs.k8s.io/yaml"
_ "github.com/google/cel-go/cel"
)

