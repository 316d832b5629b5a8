from zsn.launch import main

raise SystemExit(main())
