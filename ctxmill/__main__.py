from ctxmill.cli import main

raise SystemExit(main())
