from dbbench_cli.cli import main

raise SystemExit(main())
