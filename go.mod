module github.com/rlstore/rlstore

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/redcon v1.6.4
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
