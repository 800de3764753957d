"""Other game frameworks seen as a GameGraph: OpenSpiel (the `.[openspiel]` extra).

May import: gamegym.game.
"""
