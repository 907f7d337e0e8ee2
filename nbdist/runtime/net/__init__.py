"""The plumbing below the services: message bytes (`wire`), sockets and channels
(`transport`), the serving loop and the channels it owns (`serving`, `in_process`,
`peers`), same-host links and shared memory (`links`, `shm`, `samehost`), readiness
waits and the cluster key (`readiness`, `security`). Nothing here imports a service."""
