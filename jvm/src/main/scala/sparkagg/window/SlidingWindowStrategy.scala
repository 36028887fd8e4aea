package sparkagg.window

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Window}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/**
 * Plans a window whose expressions are all sparkagg aggregates over frames [[SlidingFrame]] accepts (ROWS
 * frames, and RANGE frames over one integer or floating order key) onto [[SlidingWindowExec]]; any other
 * window stays with Spark's WindowExec. Off with
 * `spark.sparkagg.window.enabled=false`.
 */
case class SlidingWindowStrategy(spark: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case w: Window
        if SlidingWindowStrategy.enabled(spark) && w.windowExpressions.nonEmpty &&
          w.windowExpressions.forall(e => SlidingFrame.unapply(e).isDefined) =>
      SlidingWindowExec(w.windowExpressions, w.partitionSpec, w.orderSpec, planLater(w.child)) :: Nil
    case _ => Nil
  }
}

object SlidingWindowStrategy {
  val EnabledConf = "spark.sparkagg.window.enabled"
  def enabled(spark: SparkSession): Boolean = spark.conf.get(EnabledConf, "true").toBoolean
}
