from zsn.cli import main

raise SystemExit(main())
