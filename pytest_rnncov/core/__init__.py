"""The pure-numpy core: traces of a recurrent layer, their abstractions, the profile that
normalises them, the coverage metrics, and the one coverage state type.

Nothing here imports a deep-learning framework; adapters turn models into traces.
"""
