"""The JVM pieces kconform runs, as Maven projects (versions pinned in pom.xml): shipped in the wheel as package
data, so `kconform setup` can resolve them outside a checkout."""
