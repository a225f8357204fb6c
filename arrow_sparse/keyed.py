class KeyedJagged: pass
