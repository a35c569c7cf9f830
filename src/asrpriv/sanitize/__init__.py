"""Privacy transformation of text: named entities replaced by random entities of their class.

Paper 003 §2.1 (the word-by-word, same-class strategy of Adelani et al. 2020): every selected
entity occurrence is kept with probability ``keep``, else replaced by a string of its class
drawn uniformly from a pool. :mod:`.spans` reads and writes entity spans (the ``ne/`` TSV),
:mod:`.lexicon` tags text without spans by longest match, :mod:`.transform` does the
replacement line by line.
"""

DEFAULT_CLASSES = ("PER", "LOC", "ORG", "TIME", "NUM")
