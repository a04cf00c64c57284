"""The C preprocessor's lines of a source, read once for every layer (pure, the bottom of
the layering): ``directives`` (a lexer for comments, literals and raw strings, the
directives, the defines and the conditionals' branches they sit in: whether a define is
guarded), which ``ksweep guard``, ``ksweep init`` and plan's warnings all read."""
