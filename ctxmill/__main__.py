from ctxmill.cli import console

console()
